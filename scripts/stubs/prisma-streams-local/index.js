// Only `prisma dev` imports @prisma/streams-local; Keyward replaces it with this stub (package.json
// "overrides") because the real package requires Node >= 22 and Keyward supports Node >= 20.9.
exports.startLocalDurableStreamsServer = () => {
  throw new Error("`prisma dev` is not available in Keyward (its @prisma/streams-local is stubbed out; see package.json overrides)");
};

// ESLint (flat config): `npm run lint`, zero warnings, run by .ci/run. docs/architecture.md ("Tooling") says why
// ESLint and what the import rule is.
import js from "@eslint/js";
import nextPlugin from "@next/eslint-plugin-next";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

// The files tsc compiles into the published keyward/client package (tsconfig.client.json; `tsc --listFilesOnly`
// names them): tsc keeps module specifiers as written, and a consumer has no `@/` alias, so these import each
// other by relative path. The client build fails if one of them reaches for `@/`.
const CLIENT_PACKAGE = [
  "lib/client/**/*.ts",
  "lib/claims/schema.ts",
  "lib/deadletters/schema.ts",
  "lib/http/fields.ts",
  "lib/http/ids.ts",
  "lib/keys/verdict.ts",
  "lib/pagination.ts",
];

// One import style: `./x` for the importing file's own folder (and below), `@/…` (the repository root) for
// anything else. Parent-relative paths (`../`) drift as files move; the alias names a module the same way everywhere.
const importStyle = {
  patterns: [
    {
      regex: "^\\.\\./",
      message: "Import through `@/` (the repository root); `./` only for the file's own folder (docs/architecture.md, Tooling).",
    },
  ],
};

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      ".next/",
      "dist/",
      "coverage/",
      "screenshots/",
      ".keyward/",
      ".keyward-demo/",
      "lib/db/generated/",
      "next-env.d.ts",
      "scripts/stubs/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: "error" },
    languageOptions: { globals: { ...globals.node } },
    rules: {
      "no-restricted-imports": ["error", importStyle],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
  {
    files: CLIENT_PACKAGE,
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^@/", message: "keyward/client is compiled by tsc for npm consumers: import by relative path here." }] },
      ],
    },
  },
  {
    files: ["app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}"],
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
    plugins: { "@next/next": nextPlugin, "react-hooks": reactHooks },
    rules: {
      ...nextPlugin.configs.recommended.rules,
      ...nextPlugin.configs["core-web-vitals"].rules,
      ...reactHooks.configs.flat.recommended.rules,
    },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs" },
    rules: { "@typescript-eslint/no-require-imports": "off" }, // CommonJS files load modules with require()
  },
);

-- Replay byte for byte (issue 13): a dead letter keeps its payload exactly as received, as bytes.
-- Until now the payload was stored as `json` from a JSON.parse/JSON.stringify round trip at intake (big
-- integers rounded, whitespace and escapes normalised). The bytes a replay sends are now the column's
-- bytes: the `payload` value's source text for JSON intake, or the decoded `payloadBase64` for any other
-- media type. Existing rows keep the text they were stored (and replayed) with, as UTF-8 bytes.
ALTER TABLE "dead_letters"
    ALTER COLUMN "payload" TYPE BYTEA USING convert_to("payload"::text, 'UTF8');

-- The media type a replay sends the payload with (`application/json` for a JSON `payload`).
ALTER TABLE "dead_letters"
    ADD COLUMN "content_type" TEXT NOT NULL DEFAULT 'application/json';

-- Operator access: console accounts and sessions (Better Auth's tables, snake_case), sign-in throttling,
-- and instance settings (the session-signing secret when KEYWARD_AUTH_SECRET is unset).

CREATE TABLE "auth_users" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "email" TEXT NOT NULL UNIQUE,
    "email_verified" BOOLEAN NOT NULL DEFAULT false,
    "image" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "username" TEXT UNIQUE,
    "display_username" TEXT,
    -- 'none' is an SSO identity that maps to no role: it signs in to nothing.
    "role" TEXT NOT NULL DEFAULT 'none' CHECK ("role" IN ('viewer', 'operator', 'admin', 'none')),
    "disabled" BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE "auth_sessions" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "token" TEXT NOT NULL UNIQUE,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "ip_address" TEXT,
    "user_agent" TEXT,
    "user_id" TEXT NOT NULL REFERENCES "auth_users" ("id") ON DELETE CASCADE
);
CREATE INDEX "auth_sessions_user_id_idx" ON "auth_sessions" ("user_id");
CREATE INDEX "auth_sessions_expires_at_idx" ON "auth_sessions" ("expires_at");

CREATE TABLE "auth_accounts" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "account_id" TEXT NOT NULL,
    "provider_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL REFERENCES "auth_users" ("id") ON DELETE CASCADE,
    "access_token" TEXT,
    "refresh_token" TEXT,
    "id_token" TEXT,
    "access_token_expires_at" TIMESTAMPTZ(6),
    "refresh_token_expires_at" TIMESTAMPTZ(6),
    "scope" TEXT,
    "password" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "auth_accounts_user_id_idx" ON "auth_accounts" ("user_id");
CREATE UNIQUE INDEX "auth_accounts_provider_id_account_id_key" ON "auth_accounts" ("provider_id", "account_id");

CREATE TABLE "auth_verifications" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "identifier" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "auth_verifications_identifier_idx" ON "auth_verifications" ("identifier");

-- Failed sign-ins per username ('user') and per client address ('addr'), in a sliding window, and the
-- lock-out they earn. Shared by every process on the database.
CREATE TABLE "sign_in_throttle" (
    "scope" TEXT NOT NULL CHECK ("scope" IN ('user', 'addr')),
    "key" TEXT NOT NULL,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "window_started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "locked_until" TIMESTAMPTZ(6),
    CONSTRAINT "sign_in_throttle_pkey" PRIMARY KEY ("scope", "key")
);

CREATE TABLE "settings" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "value" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);

-- SSO accounts stored before tokens were sealed (lib/auth/oidc.ts sealOidcTokens) still hold the provider's
-- access and refresh tokens and a plaintext ID token. Keyward never uses the access or refresh token, and reads
-- the ID token only right after the sign-in that stored it (to map the role), so every such token is dropped:
-- the next SSO sign-in stores a sealed ID token again. Sealed ID tokens ('v1:…', AES-256-GCM) are kept.
UPDATE auth_accounts
SET access_token = NULL,
    refresh_token = NULL,
    id_token = CASE WHEN id_token LIKE 'v1:%' THEN id_token END
WHERE provider_id = 'oidc'
  AND (access_token IS NOT NULL OR refresh_token IS NOT NULL OR (id_token IS NOT NULL AND id_token NOT LIKE 'v1:%'));

-- The API-key cache's evictions (issue 15, lib/auth/api-key-cache.ts): every change of an API key that can
-- change a verification's answer (revoked, scopes, hash, name, id, the row deleted, the table truncated) sends
-- NOTIFY keyward_api_keys with the key's id ('*' for a truncation) as part of the changing transaction, so it
-- reaches every listening server when, and only if, the change commits. The last_used_at stamp notifies nothing.

CREATE FUNCTION keyward_api_keys_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('keyward_api_keys', '*');
    ELSE
        PERFORM pg_notify('keyward_api_keys', OLD.id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER "api_keys_notify_update" AFTER UPDATE ON "api_keys"
    FOR EACH ROW
    WHEN ((OLD.id, OLD.name, OLD.scopes, OLD.key_hash, OLD.revoked_at)
          IS DISTINCT FROM (NEW.id, NEW.name, NEW.scopes, NEW.key_hash, NEW.revoked_at))
    EXECUTE FUNCTION keyward_api_keys_notify();

CREATE TRIGGER "api_keys_notify_delete" AFTER DELETE ON "api_keys"
    FOR EACH ROW EXECUTE FUNCTION keyward_api_keys_notify();

CREATE TRIGGER "api_keys_notify_truncate" AFTER TRUNCATE ON "api_keys"
    FOR EACH STATEMENT EXECUTE FUNCTION keyward_api_keys_notify();

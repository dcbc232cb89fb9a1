-- Sign-in throttling counts an attempt BEFORE its password is checked (issue 11, "lockout race"): the
-- column counts attempts in the window (failed, or still being checked), and one call of
-- keyward_sign_in_reserve decides, under row locks, whether this attempt may check a password at all.
ALTER TABLE "sign_in_throttle" RENAME COLUMN "failures" TO "attempts";

-- Reserves one attempt slot for a username AND a client address, or neither. Returns whether the
-- password may be checked; when not, which limit refused it and for how many seconds. When this attempt
-- takes the last slot of a limit, the limit locks for lock_seconds at once (locks_now), so every
-- concurrent attempt that comes after is refused without a password check, whatever its outcome.
-- Rows are locked in one order (the username's, then the address's) by every statement that locks both.
CREATE FUNCTION keyward_sign_in_reserve(
    p_user TEXT, p_addr TEXT, user_max INTEGER, addr_max INTEGER, window_seconds INTEGER, lock_seconds INTEGER
) RETURNS TABLE (allowed BOOLEAN, lock_scope TEXT, retry_after INTEGER, locks_now BOOLEAN)
LANGUAGE plpgsql AS $$
DECLARE
    u "sign_in_throttle";
    a "sign_in_throttle";
    u_count INTEGER;
    a_count INTEGER;
    u_wait INTEGER := 0;
    a_wait INTEGER := 0;
    win INTERVAL := make_interval(secs => window_seconds);
BEGIN
    -- Each row is created if missing and locked, and its newest version read, in one upsert (the no-op
    -- update is what locks it; unlike INSERT … DO NOTHING then SELECT … FOR UPDATE, it cannot miss a row
    -- that a concurrent refusal deletes in between).
    INSERT INTO "sign_in_throttle" AS t ("scope", "key", "attempts") VALUES ('user', p_user, 0)
    ON CONFLICT ("scope", "key") DO UPDATE SET "attempts" = t."attempts"
    RETURNING * INTO u;
    INSERT INTO "sign_in_throttle" AS t ("scope", "key", "attempts") VALUES ('addr', p_addr, 0)
    ON CONFLICT ("scope", "key") DO UPDATE SET "attempts" = t."attempts"
    RETURNING * INTO a;

    -- A window that has run out (or never started) counts from zero.
    u_count := CASE WHEN u."attempts" = 0 OR u."window_started_at" < now() - win THEN 0 ELSE u."attempts" END;
    a_count := CASE WHEN a."attempts" = 0 OR a."window_started_at" < now() - win THEN 0 ELSE a."attempts" END;

    -- now() is when this statement's transaction began, possibly before the one that set the lock (it
    -- waited for that row): hence the wait is capped at lock_seconds.
    IF u."locked_until" > now() THEN
        u_wait := least(ceil(extract(epoch FROM u."locked_until" - now()))::INTEGER, lock_seconds);
    ELSIF u_count >= user_max THEN
        u_wait := lock_seconds;
    END IF;
    IF a."locked_until" > now() THEN
        a_wait := least(ceil(extract(epoch FROM a."locked_until" - now()))::INTEGER, lock_seconds);
    ELSIF a_count >= addr_max THEN
        a_wait := lock_seconds;
    END IF;
    IF u_wait > 0 OR a_wait > 0 THEN
        -- A refused attempt counts nowhere: drop the empty row this call may have just created, so that
        -- refused guesses at ever-new names or from ever-new addresses leave nothing behind.
        DELETE FROM "sign_in_throttle" t
        WHERE t."attempts" = 0 AND ((t."scope" = 'user' AND t."key" = p_user) OR (t."scope" = 'addr' AND t."key" = p_addr));
        RETURN QUERY SELECT false, CASE WHEN u_wait >= a_wait THEN 'user' ELSE 'addr' END, greatest(u_wait, a_wait, 1), false;
        RETURN;
    END IF;

    UPDATE "sign_in_throttle" t SET
        "attempts" = u_count + 1,
        "window_started_at" = CASE WHEN u_count = 0 THEN now() ELSE t."window_started_at" END,
        "locked_until" = CASE WHEN u_count + 1 >= user_max THEN now() + make_interval(secs => lock_seconds) END
    WHERE t."scope" = 'user' AND t."key" = p_user;
    UPDATE "sign_in_throttle" t SET
        "attempts" = a_count + 1,
        "window_started_at" = CASE WHEN a_count = 0 THEN now() ELSE t."window_started_at" END,
        "locked_until" = CASE WHEN a_count + 1 >= addr_max THEN now() + make_interval(secs => lock_seconds) END
    WHERE t."scope" = 'addr' AND t."key" = p_addr;
    RETURN QUERY SELECT true,
        CASE WHEN u_count + 1 >= user_max THEN 'user' WHEN a_count + 1 >= addr_max THEN 'addr' END,
        0,
        (u_count + 1 >= user_max OR a_count + 1 >= addr_max);
END
$$;

-- Console sessions keep only the SHA-256 of their token (hex): the cookie carries the token itself,
-- so the session table and the signing secret together no longer make a working cookie
-- (lib/auth/session-tokens.ts). Tokens already issued are hashed in place: live sessions stay valid.
UPDATE "auth_sessions" SET "token" = encode(sha256(convert_to("token", 'UTF8')), 'hex');

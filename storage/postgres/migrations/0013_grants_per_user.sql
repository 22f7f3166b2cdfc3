-- 0013_grants_per_user: a grant (🔁) is one person's, as in SQLite's 0013. user_id is whose
-- calls it covers, granted_by who decided it; a grant made before becomes granted_by's own.
ALTER TABLE grants ADD COLUMN user_id text NOT NULL DEFAULT '';
UPDATE grants SET user_id = granted_by;
DELETE FROM grants WHERE user_id = '';
ALTER TABLE grants DROP CONSTRAINT grants_pkey;
ALTER TABLE grants ADD PRIMARY KEY (session, user_id, tool);
ALTER TABLE grants ALTER COLUMN user_id DROP DEFAULT;

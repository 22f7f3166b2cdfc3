-- 0013_grants_per_user: a grant ("approve this tool for the session", 🔁) is one person's. In a
-- shared conversation (a Slack thread, a Discord guild channel) another participant's calls of
-- the same tool still ask. user_id is whose calls the grant covers; granted_by who decided it
-- (the user or an approver). A grant made before has only granted_by, who was then the user
-- or an approver: it becomes granted_by's own, never anyone else's.
CREATE TABLE grants_per_user (
    session    TEXT    NOT NULL,
    user_id    TEXT    NOT NULL,
    tool       TEXT    NOT NULL,
    granted_by TEXT    NOT NULL DEFAULT '',
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (session, user_id, tool)
) STRICT, WITHOUT ROWID;
INSERT INTO grants_per_user (session, user_id, tool, granted_by, granted_at)
SELECT session, granted_by, tool, granted_by, granted_at FROM grants WHERE granted_by != '';
DROP TABLE grants;
ALTER TABLE grants_per_user RENAME TO grants;

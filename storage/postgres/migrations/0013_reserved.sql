-- 0013_reserved: the number of a migration on a branch in flight when scheduled work (0014)
-- was written. Migrations are numbered without gaps, so this file holds the place; the merge
-- that brings the real 0013 deletes it (a database that recorded this name refuses the real
-- one by name, loudly, rather than skip it).
SELECT 1;

-- 0008_turn_posting: the message a turn's streamed answer was created as (JSON of its platform,
-- channel and id; '' when none), recorded as soon as the platform created it. Recovery edits
-- that message into the full answer instead of posting a second one.
ALTER TABLE turns ADD COLUMN posting TEXT NOT NULL DEFAULT '';

-- 0014_turn_skills: the skills a turn loaded with the skill tool (SPEC "Skills"), in load
-- order, joined by commas ('' when none); set when the turn ends.
ALTER TABLE turns ADD COLUMN skills TEXT NOT NULL DEFAULT '';

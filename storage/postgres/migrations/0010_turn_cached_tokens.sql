-- 0010_turn_cached_tokens: the part of a turn's input tokens the provider read from its prompt
-- cache, summed over the turn's model calls like input_tokens (the ledger has it per call).
ALTER TABLE turns ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0;

-- 0008_memory_embed_model: which embedder made each memory's vector ("provider:model@dims", as
-- kb_documents.embed_model). Memory search compares only vectors of the configured embedder;
-- `echogate memory reembed` re-embeds the others. '' means no vector, or one from before
-- embedders were recorded.
ALTER TABLE memories ADD COLUMN embed_model text NOT NULL DEFAULT '';
-- Counting stale memories at start-up reads this index, not the rows.
CREATE INDEX memories_by_embed_model ON memories (embed_model);

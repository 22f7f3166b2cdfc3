-- 0005_embed_model: which embedder made each knowledge document's vectors ("provider:model@dims").
-- Vectors of another model are never compared with the current model's queries; the knowledge
-- base re-embeds such documents when they are added again (or with `echogate knowledge reembed`).
-- '' means no vectors, or vectors from before models were recorded.
ALTER TABLE kb_documents ADD COLUMN embed_model text NOT NULL DEFAULT '';

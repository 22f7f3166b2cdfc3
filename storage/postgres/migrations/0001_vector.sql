-- 0001_vector: the pgvector extension, needed by the memory and knowledge tables.
--
-- CREATE EXTENSION needs a role that may create it (a superuser, the database owner on managed
-- services that allow-list pgvector, or a pre-created extension). The extension is created in the
-- first schema of the search_path that exists; when the store runs with Config.Schema, that
-- schema or public must hold it (see the package documentation).
CREATE EXTENSION IF NOT EXISTS vector;

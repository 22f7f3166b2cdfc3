-- 0003_memory_knowledge: long-term memory, the knowledge base and consolidation jobs.
--
-- Embeddings are untyped `vector` columns: the dimension comes from the configuration
-- (embeddings.dimensions), not from this file. EnsureEmbeddingDims records it in vector_meta on
-- first use, refuses another one later (naming embeddings.dimensions), and creates the HNSW index
-- of the knowledge chunks as an expression index on embedding::vector(N) (vector_cosine_ops).
-- Memories are searched exactly within their owner (a user has hundreds or thousands, not
-- millions), which an owner index serves better than a global approximate index.
-- Keyword search uses generated tsvector columns with GIN indexes.

CREATE TABLE vector_meta (
    name text    NOT NULL PRIMARY KEY,
    dims integer NOT NULL
);

CREATE TABLE memories (
    id            text             COLLATE "C" NOT NULL PRIMARY KEY,
    owner         text             NOT NULL,
    text          text             NOT NULL,
    kind          text             NOT NULL DEFAULT '',
    importance    double precision NOT NULL DEFAULT 0,
    pinned        boolean          NOT NULL DEFAULT false,
    embedding     vector,
    session       text             NOT NULL DEFAULT '',
    source_turn   text             NOT NULL DEFAULT '',
    created_at    timestamptz      NOT NULL,
    updated_at    timestamptz      NOT NULL,
    expires_at    timestamptz,
    superseded_by text             NOT NULL DEFAULT '',
    superseded_at timestamptz,
    tsv           tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX memories_by_owner ON memories (owner, superseded_by, updated_at DESC);
CREATE INDEX memories_tsv ON memories USING gin (tsv);

CREATE TABLE memory_sessions (
    session     text        NOT NULL PRIMARY KEY,
    user_id     text        NOT NULL DEFAULT '',
    channel     text        NOT NULL DEFAULT '',
    cursor      bigint      NOT NULL DEFAULT 0,
    due_at      timestamptz,
    not_after   timestamptz,
    gen         bigint      NOT NULL DEFAULT 0,
    worker      text        NOT NULL DEFAULT '',
    lease_until timestamptz,
    attempts    integer     NOT NULL DEFAULT 0,
    last_error  text        NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL
);
CREATE INDEX memory_sessions_due ON memory_sessions (due_at) WHERE due_at IS NOT NULL;

CREATE TABLE kb_documents (
    id           text        COLLATE "C" NOT NULL PRIMARY KEY,
    source       text        NOT NULL UNIQUE,
    title        text        NOT NULL DEFAULT '',
    mime         text        NOT NULL DEFAULT '',
    content_hash text        NOT NULL DEFAULT '',
    bytes        bigint      NOT NULL DEFAULT 0,
    chunks       integer     NOT NULL DEFAULT 0,
    added_at     timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE TABLE kb_chunks (
    doc_id    text    NOT NULL,
    seq       integer NOT NULL,
    heading   text    NOT NULL DEFAULT '',
    text      text    NOT NULL,
    start_off integer NOT NULL DEFAULT 0,
    end_off   integer NOT NULL DEFAULT 0,
    embedding vector,
    tsv       tsvector GENERATED ALWAYS AS (setweight(to_tsvector('english', heading), 'A') || setweight(to_tsvector('english', text), 'B')) STORED,
    PRIMARY KEY (doc_id, seq)
);
CREATE INDEX kb_chunks_tsv ON kb_chunks USING gin (tsv);

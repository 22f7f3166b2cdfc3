-- 0002_memory_knowledge: long-term memory, the knowledge base and consolidation jobs.
--
-- Vectors are BLOBs of little-endian float32 (the sqlite-vec format) compared with
-- vec_distance_cosine; the embedding size is recorded once in vector_meta and checked on every
-- write and search (a mismatch names embeddings.dimensions). Keyword search uses FTS5 external
-- content tables kept in step by triggers.

-- vector_meta: one row per vector space ("embeddings"): its dimension, set on first use.
CREATE TABLE vector_meta (
    name TEXT    NOT NULL PRIMARY KEY,
    dims INTEGER NOT NULL
) STRICT;

-- memories: per-owner long-term memories; superseded rows are kept as history.
CREATE TABLE memories (
    rowid         INTEGER PRIMARY KEY,
    embedding     BLOB,                -- first: see kb_chunks
    id            TEXT    NOT NULL UNIQUE,
    owner         TEXT    NOT NULL,
    text          TEXT    NOT NULL,
    kind          TEXT    NOT NULL DEFAULT '',
    importance    REAL    NOT NULL DEFAULT 0,
    pinned        INTEGER NOT NULL DEFAULT 0,
    session       TEXT    NOT NULL DEFAULT '',
    source_turn   TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    expires_at    INTEGER,
    superseded_by TEXT    NOT NULL DEFAULT '',
    superseded_at INTEGER
) STRICT;
CREATE INDEX memories_by_owner ON memories (owner, superseded_by, updated_at DESC);

-- The owner is indexed too, so that a search intersects the owner's postings with the query's
-- instead of ranking every owner's matches and filtering afterwards.
CREATE VIRTUAL TABLE memories_fts USING fts5(owner, text, content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, owner, text) VALUES (new.rowid, new.owner, new.text);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, owner, text) VALUES ('delete', old.rowid, old.owner, old.text);
END;
-- ORDER BY rank ranks inside FTS5 (cheaper than sorting a join); the owner column weighs nothing.
INSERT INTO memories_fts(memories_fts, rank) VALUES ('rank', 'bm25(0.0, 1.0)');
CREATE TRIGGER memories_au AFTER UPDATE OF owner, text ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, owner, text) VALUES ('delete', old.rowid, old.owner, old.text);
    INSERT INTO memories_fts(rowid, owner, text) VALUES (new.rowid, new.owner, new.text);
END;

-- memory_sessions: the consolidation state of a session: the cursor (last transcript seq
-- consolidated) and, while a job is pending, when it is due and who holds its lease.
CREATE TABLE memory_sessions (
    session     TEXT    NOT NULL PRIMARY KEY,
    user_id     TEXT    NOT NULL DEFAULT '',
    channel     TEXT    NOT NULL DEFAULT '',
    cursor      INTEGER NOT NULL DEFAULT 0,
    due_at      INTEGER,             -- NULL: nothing pending
    not_after   INTEGER,             -- debounce cap of the pending job
    gen         INTEGER NOT NULL DEFAULT 0, -- bumped by every enqueue
    worker      TEXT    NOT NULL DEFAULT '',
    lease_until INTEGER,
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT    NOT NULL DEFAULT '',
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX memory_sessions_due ON memory_sessions (due_at) WHERE due_at IS NOT NULL;

-- kb_documents / kb_chunks: the knowledge base.
CREATE TABLE kb_documents (
    id           TEXT    NOT NULL PRIMARY KEY,
    source       TEXT    NOT NULL UNIQUE,
    title        TEXT    NOT NULL DEFAULT '',
    mime         TEXT    NOT NULL DEFAULT '',
    content_hash TEXT    NOT NULL DEFAULT '',
    bytes        INTEGER NOT NULL DEFAULT 0,
    chunks       INTEGER NOT NULL DEFAULT 0,
    added_at     INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;

-- The embedding comes before the text: a vector scan then reads only the start of each record
-- and never follows the text into overflow pages.
CREATE TABLE kb_chunks (
    rowid     INTEGER PRIMARY KEY,
    embedding BLOB,
    doc_id    TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    start_off INTEGER NOT NULL DEFAULT 0,
    end_off   INTEGER NOT NULL DEFAULT 0,
    heading   TEXT    NOT NULL DEFAULT '',
    text      TEXT    NOT NULL,
    UNIQUE (doc_id, seq)
) STRICT;

CREATE VIRTUAL TABLE kb_chunks_fts USING fts5(heading, text, content='kb_chunks', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2');
INSERT INTO kb_chunks_fts(kb_chunks_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0)');
CREATE TRIGGER kb_chunks_ai AFTER INSERT ON kb_chunks BEGIN
    INSERT INTO kb_chunks_fts(rowid, heading, text) VALUES (new.rowid, new.heading, new.text);
END;
CREATE TRIGGER kb_chunks_ad AFTER DELETE ON kb_chunks BEGIN
    INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, heading, text) VALUES ('delete', old.rowid, old.heading, old.text);
END;

-- A prediction-powered evaluation is valid only when the items people
-- label are a uniform random sample. A project's first draw turns it to
-- drawn queues (projects.drawn_queue): every item nobody has labelled or
-- holds is held back from people's queues (item_counts.held), and so is
-- every item imported later, until a draw sends it to them. The claim's
-- partial index leaves held items out, so a claim still reads the index
-- alone and never wades through the held ones.
--
-- A draw is stored with its seed (ppi.Draw reproduces it from the seed and
-- the pool in item order) and the items it drew, in draw order. An item is
-- drawn at most once: draw_items_item_key keeps two draws from ever
-- sending the same item twice, whatever happens around them.

-- +goose Up
ALTER TABLE projects ADD COLUMN drawn_queue boolean NOT NULL DEFAULT false;
ALTER TABLE item_counts ADD COLUMN held boolean NOT NULL DEFAULT false;
DROP INDEX item_counts_next_idx;
CREATE INDEX item_counts_next_idx ON item_counts (project_id, filled DESC, item_id) WHERE NOT pulled AND NOT held;
CREATE INDEX item_counts_held_idx ON item_counts (project_id, item_id) WHERE held;

CREATE TABLE draws (
    id         bigserial PRIMARY KEY,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    actor_id   bigint REFERENCES users (id) ON DELETE SET NULL,
    -- A seed is a uint64 other than 0 (0 asks ppi.Draw for a fresh one).
    seed       numeric(20, 0) NOT NULL CHECK (seed > 0 AND seed < 18446744073709551616),
    k          int NOT NULL CHECK (k > 0),
    system_key text NOT NULL,
    -- The system drawn from, NULL for every system.
    system     text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX draws_project_idx ON draws (project_id, id);

CREATE TABLE draw_items (
    draw_id  bigint NOT NULL REFERENCES draws (id) ON DELETE CASCADE,
    position int NOT NULL CHECK (position >= 0),
    item_id  bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    PRIMARY KEY (draw_id, position)
);
CREATE UNIQUE INDEX draw_items_item_key ON draw_items (item_id);

-- +goose Down
DROP TABLE draw_items;
DROP TABLE draws;
DROP INDEX item_counts_held_idx;
DROP INDEX item_counts_next_idx;
CREATE INDEX item_counts_next_idx ON item_counts (project_id, filled DESC, item_id) WHERE NOT pulled;
ALTER TABLE item_counts DROP COLUMN held;
ALTER TABLE projects DROP COLUMN drawn_queue;

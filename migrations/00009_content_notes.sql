-- Content notes an annotator has opened. A dialogue behind a content note
-- (a word of the wellbeing list, or a lead's mark) is answered only by
-- someone who opened its note, and stays open for them afterwards.

-- +goose Up
CREATE TABLE content_notes_opened (
    rater_id  bigint NOT NULL REFERENCES raters (id),
    item_id   bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    opened_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rater_id, item_id)
);
CREATE INDEX content_notes_opened_item_idx ON content_notes_opened (item_id);

-- +goose Down
DROP TABLE content_notes_opened;

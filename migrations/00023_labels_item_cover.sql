-- An experiment reads every answer of its frozen items: for 2,000 items
-- that is 192,000 labels scattered over as many heap pages as there were
-- answer sets. The index behind labels' uniqueness on (item, rater,
-- rubric item) carries the value too, so those labels are read from the
-- index alone, item by item, in a third of the pages. The constraint
-- keeps its name and its columns; no other index is added.

-- +goose Up
ALTER TABLE labels DROP CONSTRAINT labels_item_id_rater_id_rubric_item_key_key;
ALTER TABLE labels ADD CONSTRAINT labels_item_id_rater_id_rubric_item_key_key
    UNIQUE (item_id, rater_id, rubric_item_key) INCLUDE (value);

-- +goose Down
ALTER TABLE labels DROP CONSTRAINT labels_item_id_rater_id_rubric_item_key_key;
ALTER TABLE labels ADD CONSTRAINT labels_item_id_rater_id_rubric_item_key_key
    UNIQUE (item_id, rater_id, rubric_item_key);

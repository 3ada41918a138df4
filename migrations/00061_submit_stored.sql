-- A submit-and-next is sent as one batch, COMMIT included, so that the
-- locks it takes (its item's counters, the next item's) are held for one
-- round trip and not two. Whether it may commit is then decided by the
-- server: submit_stored passes the new answer set's id through, and when
-- the submission stored nothing (not the person's assignment, the lease
-- run out, a double submit, a content note not opened) it ends the
-- transaction with SQLSTATE AT001, so that nothing of the batch, the claim
-- of the next item included, commits. The store then asks again the long
-- way, which tells which of those it was.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION submit_stored(answer_set_id bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF answer_set_id IS NULL THEN
        RAISE EXCEPTION 'the submission stored no answer set' USING ERRCODE = 'AT001';
    END IF;
    RETURN answer_set_id;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION submit_stored(bigint);

package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/attune/attune/internal/attune"
)

// uploadRefused is why an upload stored nothing, in the words and status
// its page shows: a missing file, an oversize body, a malformed upload, or
// (with err set) the file's own problems, such as line errors.
type uploadRefused struct {
	status  int
	source  string // the file's name, when one was sent
	err     error  // the store's or reader's error, for line errors
	message string
}

func (u *uploadRefused) Error() string { return u.message }

// readUpload streams a multipart upload of at most limit bytes without
// holding it: small fields sent before the file are read into fields (by
// name, 64 bytes at most; one that is not storable text, per
// attune.TextProblem, refuses the upload); the first file part goes to
// store, which stores it (all or nothing) and reports its own problems.
// Parts after the file are never read, so forms put their options first. Every refusal comes back as *uploadRefused;
// store's errors of other kinds are returned as they are.
func readUpload(r *http.Request, limit int64, fields map[string]string, store func(name string, file io.Reader) error) error {
	tooLarge := func(err error) bool {
		var mbe *http.MaxBytesError
		return errors.As(err, &mbe)
	}
	noFile := &uploadRefused{status: http.StatusUnprocessableEntity, message: "Choose a file to import."}
	sizeLimit := fmt.Sprintf("The file is larger than %d MiB. Split it into smaller files and import each.", limit>>20)
	mr, err := r.MultipartReader()
	if err != nil {
		return noFile
	}
	for {
		part, err := mr.NextPart()
		switch {
		case errors.Is(err, io.EOF):
			return noFile
		case tooLarge(err):
			return &uploadRefused{status: http.StatusRequestEntityTooLarge, message: sizeLimit}
		case err != nil:
			return &uploadRefused{status: http.StatusBadRequest, message: "The upload was cut short or malformed. Try again."}
		}
		if part.FormName() != "file" {
			if _, wanted := fields[part.FormName()]; wanted {
				v, _ := io.ReadAll(io.LimitReader(part, 64))
				if p := attune.TextProblem(string(v)); p != "" {
					part.Close()
					return &uploadRefused{status: http.StatusUnprocessableEntity,
						message: fmt.Sprintf("The form's %s field %s.", part.FormName(), p)}
				}
				fields[part.FormName()] = string(v)
			}
			part.Close()
			continue
		}
		name := part.FileName()
		if name == "" {
			// A browser sends an empty, nameless file part when none was chosen.
			return noFile
		}
		err = store(name, part)
		switch {
		case err == nil:
			return nil
		case tooLarge(err):
			return &uploadRefused{status: http.StatusRequestEntityTooLarge, source: name, message: sizeLimit}
		case errors.Is(err, attune.ErrInvalid):
			return &uploadRefused{status: http.StatusUnprocessableEntity, source: name, err: err}
		case errors.Is(err, attune.ErrConflict):
			return &uploadRefused{status: http.StatusConflict, source: name, err: err}
		}
		return err
	}
}

// checked reports whether a checkbox's value read by readUpload is on.
func checked(v string) bool { return v == "on" || v == "true" || v == "1" }

package kit

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/attune/attune/internal/attune"
)

// UploadRefused is why an upload stored nothing, in the words and status
// its page shows: a missing file, an oversize body, a malformed upload, or
// (with err set) the file's own problems, such as line errors.
type UploadRefused struct {
	Status  int
	Source  string // the file's name, when one was sent
	Err     error  // the store's or reader's error, for line errors
	Message string
}

func (u *UploadRefused) Error() string { return u.Message }

// ReadUpload streams a multipart upload of at most limit bytes without
// holding it: small fields sent before the file are read into fields (by
// name, 64 bytes at most; one that is not storable text, per
// attune.TextProblem, refuses the upload); the first file part goes to
// store, which stores it (all or nothing) and reports its own problems.
// Parts after the file are never read, so forms put their options first. Every refusal comes back as *UploadRefused;
// store's errors of other kinds are returned as they are.
func ReadUpload(r *http.Request, limit int64, fields map[string]string, store func(name string, file io.Reader) error) error {
	tooLarge := func(err error) bool {
		var mbe *http.MaxBytesError
		return errors.As(err, &mbe)
	}
	noFile := &UploadRefused{Status: http.StatusUnprocessableEntity, Message: "Choose a file to import."}
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
			return &UploadRefused{Status: http.StatusRequestEntityTooLarge, Message: sizeLimit}
		case err != nil:
			return &UploadRefused{Status: http.StatusBadRequest, Message: "The upload was cut short or malformed. Try again."}
		}
		if part.FormName() != "file" {
			if _, wanted := fields[part.FormName()]; wanted {
				v, _ := io.ReadAll(io.LimitReader(part, 64))
				if p := attune.TextProblem(string(v)); p != "" {
					part.Close()
					return &UploadRefused{Status: http.StatusUnprocessableEntity,
						Message: fmt.Sprintf("The form's %s field %s.", part.FormName(), p)}
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
			return &UploadRefused{Status: http.StatusRequestEntityTooLarge, Source: name, Message: sizeLimit}
		case errors.Is(err, attune.ErrInvalid):
			return &UploadRefused{Status: http.StatusUnprocessableEntity, Source: name, Err: err}
		case errors.Is(err, attune.ErrConflict):
			return &UploadRefused{Status: http.StatusConflict, Source: name, Err: err}
		}
		return err
	}
}

// Checked reports whether a checkbox's value read by ReadUpload is on.
func Checked(v string) bool { return v == "on" || v == "true" || v == "1" }

package extract

import "errors"

// Sentinel errors of Extract. Returned errors wrap one of them with the file name and a fix.
var (
	// ErrUnsupported: the content is of a type Extract does not read (a ZIP, a Word document,
	// an executable…).
	ErrUnsupported = errors.New("unsupported file type")
	// ErrImage: the content is an image. Images have no text to extract; vision-capable models
	// get them as image parts instead.
	ErrImage = errors.New("file is an image")
	// ErrNoText: the document holds no extractable text (a scanned PDF, an empty file).
	ErrNoText = errors.New("no extractable text")
	// ErrMalformed: the document is damaged or not what its type says (a broken PDF).
	ErrMalformed = errors.New("malformed document")
	// ErrPageRange: the requested first page is past the end of the document.
	ErrPageRange = errors.New("page out of range")
)

// Package controlrecord defines what a conversation records of its
// controllers: the one that runs (Controller) and the one that governed
// each stretch of a reply (ReplyControl). The controller host makes and
// resumes these records, sessions save them, and the conversation
// carries them between the two; the package sits below all three, so
// that the host need not import sessions for them, nor sessions the host.
// The JSON keys are those of the session files.
package controlrecord

// Controller is the state of a conversation's controller.
type Controller struct {
	Name string `json:"name"`
	// Path is the file it was loaded from, when it was given by path
	// (absent for one found by name).
	Path   string `json:"path,omitempty"`
	Arg    string `json:"arg"`
	SHA256 string `json:"sha256"`
	// KV is the controller's key-value store.
	KV map[string][]byte `json:"kv,omitempty"`
}

// ReplyControl is one stretch of a reply under one controller, or under
// none: from its From-th token (counted from the reply's start when the
// stretch began) until the next stretch or the reply's end.
type ReplyControl struct {
	From int `json:"from"`
	// Name and Arg are the controller ("" when none ran).
	Name string `json:"name,omitempty"`
	Arg  string `json:"arg,omitempty"`
	// Fault, when set, says why the controller was switched off at From:
	// the stretch ran with none.
	Fault string `json:"fault,omitempty"`
}

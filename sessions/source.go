package sessions

// ModelSource says what opens a session's model again: a Hugging Face
// repo id pinned to the commit it was made with, else a local path.
// Sessions written before it was kept have none; they resume on the
// model the user names.
type ModelSource struct {
	// Repo and Revision are the repo id and commit hash of a model from
	// the Hugging Face cache ("" for a local folder).
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Path is the model's absolute path: the folder it was loaded from
	// (for a cached repo, its snapshot folder).
	Path string `json:"path,omitempty"`
}

// Name is what opens the model again (chatopen.Open): repo@commit for a
// cached repo, else the path.
func (s ModelSource) Name() string {
	switch {
	case s.Repo != "" && s.Revision != "":
		return s.Repo + "@" + s.Revision
	case s.Repo != "":
		return s.Repo
	}
	return s.Path
}

// String names the model for people: the repo id, else the folder.
func (s ModelSource) String() string {
	if s.Repo != "" {
		return s.Repo
	}
	return s.Path
}

// IsZero reports whether s says nothing.
func (s ModelSource) IsZero() bool { return s == ModelSource{} }

// Fetch says how to get the model back when it is gone: a pull for a
// repo, else nothing (a folder is the user's own).
func (s ModelSource) Fetch() string {
	if s.Repo == "" {
		return ""
	}
	return "driftwood pull " + s.Name()
}

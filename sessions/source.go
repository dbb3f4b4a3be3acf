package sessions

// ModelSource says what opens a session's model again: a Hugging Face
// repo id pinned to the commit it was made with, else a local path.
// Sessions written before it was kept have none; they resume on the
// model the user names.
type ModelSource struct {
	// Store is the name a model of ollama's or LM Studio's was opened by
	// ("ollama:llama3.2:1b"): those stores name their models, and a file
	// of theirs may move when it is updated.
	Store string `json:"store,omitempty"`
	// Repo and Revision are the repo id and commit hash of a model from
	// the Hugging Face cache ("" for a local folder); File is the GGUF
	// file of the snapshot, for a repo of GGUF files.
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	File     string `json:"file,omitempty"`
	// Path is the model's absolute path: the folder it was loaded from
	// (for a cached repo, its snapshot folder).
	Path string `json:"path,omitempty"`
}

// Name is what opens the model again (chatopen.Open): the store's name
// for it, repo@commit (and :FILE for a GGUF file) for a cached repo, else
// the path.
func (s ModelSource) Name() string {
	name := s.Repo
	switch {
	case s.Store != "":
		return s.Store
	case s.Repo == "":
		return s.Path
	case s.Revision != "":
		name += "@" + s.Revision
	}
	if s.File != "" {
		name += ":" + s.File
	}
	return name
}

// String names the model for people: the store's name, the repo id (and
// file), else the path.
func (s ModelSource) String() string {
	switch {
	case s.Store != "":
		return s.Store
	case s.Repo != "" && s.File != "":
		return s.Repo + ":" + s.File
	case s.Repo != "":
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

package chatsession

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/sessions"
)

// Target is a session a front-end was asked to resume, read (its header
// only) before a model is opened, so that the session's own model can be
// opened when the user names none.
type Target struct {
	Name string
	// Exists says the session has been saved; Meta is its header then.
	Exists bool
	Meta   sessions.Meta
}

// Find names the session to resume, name or, with latest, the most
// recently updated one, and reads its header. A name with no session yet
// is a Target that does not exist; a session that cannot be read is an
// error that says why.
func Find(store sessions.Store, name string, latest bool) (Target, error) {
	if latest {
		var err error
		if name, err = store.Latest(); err != nil {
			return Target{}, err
		}
	}
	path, err := store.Path(name)
	if err != nil {
		return Target{}, err
	}
	if !store.Exists(name) {
		return Target{Name: name}, nil
	}
	meta, err := sessions.ReadMeta(path)
	if err != nil {
		return Target{}, err
	}
	return Target{Name: name, Exists: true, Meta: meta}, nil
}

// Model is the session's model, to open when the user names none; ok is
// false when the session records none (one written before sessions kept
// it, or one not yet saved).
func (t Target) Model() (src sessions.ModelSource, ok bool) {
	if !t.Exists || t.Meta.ModelSource == nil || t.Meta.ModelSource.Name() == "" {
		return sessions.ModelSource{}, false
	}
	return *t.Meta.ModelSource, true
}

// MadeWith reports whether the session's model state belongs to the
// model with this fingerprint (engine.Model.Fingerprint).
func (t Target) MadeWith(fingerprint string) bool {
	return t.Exists && t.Meta.ModelFingerprint == fingerprint
}

// ModelMissing is the error for a session whose model did not open
// (err): which model the session needs, and how to get it back.
func (t Target) ModelMissing(err error) error {
	src, _ := t.Model()
	how := "give --model with the model it was made with (its transcript then resumes on any model you name)"
	if fetch := src.Fetch(); fetch != "" {
		how = "get it back with: " + fetch + " — or " + how
	}
	return fmt.Errorf("session %s needs the model %s (%s), which did not open: %w\n%s", t.Name, t.Meta.Model, src.Name(), err, how)
}

package hub

import "testing"

func TestSnapshotOf(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		dir, repo string
		ok        bool
		reason    string
	}{
		{"/c/hub/models--mlx-community--Llama-3.2-1B-Instruct-4bit/snapshots/" + commit, "mlx-community/Llama-3.2-1B-Instruct-4bit", true, "a cached snapshot names its repo"},
		{"/c/hub/models--org--name/snapshots/" + commit + "/", "org/name", true, "a trailing slash changes nothing"},
		{"/c/hub/models--org--name/snapshots/main", "", false, "a branch name is not a commit"},
		{"/c/hub/datasets--org--name/snapshots/" + commit, "", false, "only model repos"},
		{"/c/hub/models--org--na--me/snapshots/" + commit, "", false, "'--' cannot be in a repo id"},
		{"/home/me/models/tiny/" + commit, "", false, "not under snapshots/"},
		{"testdata/models/tiny-f32", "", false, "a plain folder"},
	}
	for _, c := range cases {
		repo, got, ok := SnapshotOf(c.dir)
		if ok != c.ok || repo != c.repo || (ok && got != commit) {
			t.Errorf("%s: SnapshotOf(%q) = %q, %q, %v", c.reason, c.dir, repo, got, ok)
		}
	}
}

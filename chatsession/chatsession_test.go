package chatsession

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// model opens tiny-f32 (random weights, the real tokenizer and template).
func model(t *testing.T) *chatopen.Loaded {
	t.Helper()
	l, err := chatopen.Open(context.Background(), golden.ModelDir("tiny-f32"), chatopen.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// newConv starts a greedy conversation on l with short replies.
func newConv(t *testing.T, l *chatopen.Loaded) *conversation.Conversation {
	t.Helper()
	conv, err := l.Chat(chatopen.ChatOptions{Context: 512, MaxTokens: 8, Sampler: engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conv.Close)
	return conv
}

func nothing(conversation.Update) error { return nil }

// send sends text and fails the test on any error, the save's included.
func send(t *testing.T, c *Chat, text string) Turn {
	t.Helper()
	turn, err := c.Send(context.Background(), text, nothing)
	if err != nil || turn.SaveErr != nil {
		t.Fatalf("send %q: %v, save: %v", text, err, turn.SaveErr)
	}
	return turn
}

// messages reads session name's transcript from disk.
func messages(t *testing.T, store sessions.Store, name string) []string {
	t.Helper()
	snap, err := store.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var out []string
	for _, m := range snap.Meta.Messages {
		out = append(out, m.Content)
	}
	return out
}

// TestSavedAfterEveryReply: a new chat is named at its first reply and
// saved after each one, so that a process killed between replies loses
// nothing; Close then has nothing left to write.
func TestSavedAfterEveryReply(t *testing.T) {
	l := model(t)
	store := sessions.Store{Dir: t.TempDir()}
	c := New(newConv(t, l), Options{Store: store})
	if c.Name() != "" {
		t.Fatalf("a new chat is named %q before its first reply", c.Name())
	}
	first := send(t, c, "one")
	if first.Saved == "" || !strings.HasPrefix(first.Saved, "chat-") || c.Name() != first.Saved {
		t.Fatalf("after the first reply: saved %q, name %q", first.Saved, c.Name())
	}
	if got := messages(t, store, c.Name()); len(got) != 2 || got[0] != "one" {
		t.Fatalf("on disk after one reply: %q", got)
	}
	if second := send(t, c, "two"); second.Saved != first.Saved {
		t.Fatalf("the second reply saved as %q, the first as %q", second.Saved, first.Saved)
	}
	if got := messages(t, store, c.Name()); len(got) != 4 || got[2] != "two" {
		t.Fatalf("on disk after two replies: %q", got)
	}
	if _, err := store.Claim(c.Name()); !isBusy(err) {
		t.Fatalf("another claim on the open chat's session: %v, want it refused", err)
	}
	closed, err := c.Close()
	if err != nil || closed.Name != first.Saved || closed.Wrote {
		t.Fatalf("Close: %+v, %v; want the session named, nothing left to write", closed, err)
	}
	claim, err := store.Claim(first.Saved)
	if err != nil {
		t.Fatalf("the session is still held after Close: %v", err)
	}
	claim.Release()
}

func isBusy(err error) bool {
	var busy *sessions.BusyError
	return errors.As(err, &busy)
}

// TestStoppedReplyIsSaved: a reply cut short keeps what it produced, and
// the save after it keeps that too.
func TestStoppedReplyIsSaved(t *testing.T) {
	l := model(t)
	store := sessions.Store{Dir: t.TempDir()}
	c := New(newConv(t, l), Options{Store: store})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	turn, err := c.Send(ctx, "stop me", func(u conversation.Update) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || turn.Saved == "" || turn.SaveErr != nil {
		t.Fatalf("stopped reply: %v, saved %q (%v)", err, turn.Saved, turn.SaveErr)
	}
	if got := messages(t, store, turn.Saved); len(got) != 2 || got[1] != turn.Text || got[1] == "" {
		t.Fatalf("on disk %q, the reply was %q", got, turn.Text)
	}
}

// TestOpenRestores: Open brings a session back with its model state, and
// records the model it needs; a name with no session starts one, and is
// not written until it has a turn.
func TestOpenRestores(t *testing.T) {
	l := model(t)
	store := sessions.Store{Dir: t.TempDir()}
	a, rep, err := Open(newConv(t, l), Options{Store: store}, "notes")
	if err != nil || !rep.New || a.Name() != "notes" {
		t.Fatalf("Open of a new name: %+v, %v", rep, err)
	}
	send(t, a, "hello")
	tokens := a.Conversation().Tokens()
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}

	b, rep, err := Open(newConv(t, l), Options{Store: store}, "notes")
	if err != nil || rep.New || rep.Fallback != nil || rep.Tokens != tokens {
		t.Fatalf("restore: %+v, %v; want %d tokens from the model state", rep, err, tokens)
	}
	if b.Changed() {
		t.Error("a chat just restored says it changed")
	}
	b.Conversation().SetSystem("be brief")
	if !b.Changed() {
		t.Error("a new system prompt is not a change")
	}
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}

	target, err := Find(store, "", true)
	if err != nil || target.Name != "notes" || !target.Exists {
		t.Fatalf("Find latest: %+v, %v", target, err)
	}
	src, ok := target.Model()
	if abs, _ := filepath.Abs(golden.ModelDir("tiny-f32")); !ok || src.Path != abs || src.Name() != abs {
		t.Errorf("the session's model: %+v (%v), want the folder %s", src, ok, abs)
	}
	if !target.MadeWith(l.Weights.Fingerprint) {
		t.Error("the session does not say it was made with its model")
	}
	if target.Meta.Messages[0].Content != "be brief" {
		t.Errorf("the change made before Close was not saved: %+v", target.Meta.Messages[0])
	}

	c, rep, err := Open(newConv(t, l), Options{Store: store}, "empty")
	if err != nil || !rep.New {
		t.Fatal(rep, err)
	}
	if closed, err := c.Close(); err != nil || closed.Name != "" || store.Exists("empty") {
		t.Errorf("a new session left without a turn: %+v, %v, exists %v", closed, err, store.Exists("empty"))
	}
}

// TestSaveAs: naming a chat renames the session it had named itself, but
// copies one the user named; another conversation's session is never
// replaced.
func TestSaveAs(t *testing.T) {
	l := model(t)
	store := sessions.Store{Dir: t.TempDir()}
	c := New(newConv(t, l), Options{Store: store})
	made := send(t, c, "one").Saved
	send(t, c, "two") // the made-up name survives a second save
	if err := c.SaveAs("mine"); err != nil {
		t.Fatal(err)
	}
	if store.Exists(made) || !store.Exists("mine") || c.Name() != "mine" {
		t.Fatalf("after SaveAs: %s exists %v, mine %v, name %q", made, store.Exists(made), store.Exists("mine"), c.Name())
	}
	if err := c.SaveAs("copy"); err != nil {
		t.Fatal(err)
	}
	if !store.Exists("mine") || !store.Exists("copy") {
		t.Errorf("a session the user named was not kept: mine %v, copy %v", store.Exists("mine"), store.Exists("copy"))
	}
	if _, err := c.Clear(); err != nil {
		t.Fatal(err)
	}
	send(t, c, "other")
	if err := c.SaveAs("mine"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("SaveAs over another conversation's session: %v", err)
	}
	if got := messages(t, store, "mine"); len(got) != 4 {
		t.Errorf("mine holds %q", got)
	}
}

// TestLoadAndClear: Load saves the chat before it replaces it, and Clear
// starts an unnamed one after saving.
func TestLoadAndClear(t *testing.T) {
	l := model(t)
	store := sessions.Store{Dir: t.TempDir()}
	c := New(newConv(t, l), Options{Store: store})
	first := send(t, c, "first").Saved
	saved, err := c.Clear()
	if err != nil || saved != "" || c.Name() != "" || len(c.Conversation().Messages()) != 0 {
		t.Fatalf("Clear of a saved chat: saved %q, %v, name %q, %d messages", saved, err, c.Name(), len(c.Conversation().Messages()))
	}
	c.Conversation().SetSystem("unsaved change")
	second := send(t, c, "second").Saved
	if second == first {
		t.Fatalf("the new chat saved over the old one (%s)", first)
	}
	c.Conversation().SetSystem("changed again")
	saved, rep, err := c.Load(first)
	if err != nil || saved != second || rep.Name != first || rep.Fallback != nil {
		t.Fatalf("Load: saved %q, %+v, %v", saved, rep, err)
	}
	if got := messages(t, store, second); got[0] != "changed again" {
		t.Errorf("the change before Load was lost: %q", got)
	}
	if _, _, err := c.Load("missing"); err != nil {
		t.Fatal(err) // a new session of that name
	}
	if c.Name() != "missing" {
		t.Errorf("name %q after loading a new name", c.Name())
	}
}

// TestModelMissing says which model a session needs and how to get it.
func TestModelMissing(t *testing.T) {
	target := Target{Name: "s", Exists: true, Meta: sessions.Meta{Model: "Llama-3.2-1B-Instruct-4bit (1B)",
		ModelSource: &sessions.ModelSource{Repo: "mlx-community/Llama-3.2-1B-Instruct-4bit", Revision: strings.Repeat("a", 40)}}}
	err := target.ModelMissing(os.ErrNotExist)
	for _, want := range []string{"session s needs the model Llama-3.2-1B-Instruct-4bit", "driftwood pull mlx-community/Llama-3.2-1B-Instruct-4bit@aaaa", "--model"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Error("the cause is lost")
	}
}

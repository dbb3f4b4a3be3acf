package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// ttftResult is the time to first token of a new chat, from opening the
// model to the reply's first token, without the prefix cache (cold) and
// starting from it (warm); medians. WarmChatSeconds is the warm chats'
// time after the model was open: the chat's own first token.
type ttftResult struct {
	Prompt          string  `json:"prompt"`
	PromptTokens    int     `json:"prompt_tokens"`
	PrefixTokens    int     `json:"prefix_tokens"`
	ColdSeconds     float64 `json:"cold_s"`
	WarmSeconds     float64 `json:"warm_s"`
	WarmChatSeconds float64 `json:"warm_chat_s"`
	Runs            int     `json:"runs"`
}

// errFirstToken ends a measured reply at its first token.
var errFirstToken = errors.New("first token")

// benchTTFT measures a new chat's time to first token runs times each
// way, alternating: cold (no prefix cache) and warm (its entry made by
// one unmeasured chat first). Each run opens the model afresh, as a new
// process would; only the process start itself is not counted.
func benchTTFT(ctx context.Context, g *genFlags, prompt string, runs int, errOut io.Writer) (ttftResult, error) {
	res := ttftResult{Prompt: prompt, Runs: runs}
	dir, err := os.MkdirTemp("", "driftwood-bench-prefixes-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	warmCache := &sessions.Prefixes{Dir: dir, Limit: 1 << 30}
	// chat opens the model, starts a chat with prefixes and returns the
	// time to its first token, how long opening the model took, and the
	// reply's stats.
	var opened time.Duration
	chat := func(prefixes *sessions.Prefixes) (time.Duration, conversation.Reply, error) {
		start := time.Now()
		l, err := chatopen.Open(ctx, g.model, g.openOptions(errOut))
		if err != nil {
			return 0, conversation.Reply{}, err
		}
		defer l.Close()
		if err := l.CanChat(); err != nil {
			return 0, conversation.Reply{}, err
		}
		opened = time.Since(start)
		conv, err := l.Chat(chatopen.ChatOptions{Context: g.context, Sampler: engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}, MaxTokens: 1, System: g.cfg.System, Prefixes: prefixes})
		if err != nil {
			return 0, conversation.Reply{}, err
		}
		defer conv.Close()
		var took time.Duration
		reply, err := conv.Send(ctx, prompt, func(u conversation.Update) error {
			if u.Event.Token >= 0 {
				took = time.Since(start)
				return errFirstToken
			}
			return nil
		})
		if err != nil && !errors.Is(err, errFirstToken) {
			return 0, reply, err
		}
		if err == nil {
			took = time.Since(start) // the reply ended without a token
		}
		return took, reply, nil
	}
	if _, _, err := chat(warmCache); err != nil {
		return res, err
	}
	var cold, warm, warmChat []float64
	for r := range runs {
		c, reply, err := chat(nil)
		if err != nil {
			return res, err
		}
		res.PromptTokens = reply.Stats.PromptTokens
		w, reply, err := chat(warmCache)
		if err != nil {
			return res, err
		}
		if reply.PrefixErr != nil || reply.Prefix == 0 {
			return res, fmt.Errorf("the warm chat did not start from the prefix cache (%v)", reply.PrefixErr)
		}
		res.PrefixTokens = reply.Prefix
		cold, warm = append(cold, c.Seconds()), append(warm, w.Seconds())
		warmChat = append(warmChat, (w - opened).Seconds())
		fmt.Fprintf(errOut, "run %d/%d: cold %.3f s, warm %.3f s (%.3f s after the model was open)\n", r+1, runs, cold[r], warm[r], warmChat[r])
	}
	res.ColdSeconds, res.WarmSeconds, res.WarmChatSeconds = median(cold), median(warm), median(warmChat)
	return res, nil
}

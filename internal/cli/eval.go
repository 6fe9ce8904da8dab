package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hestia-dev/hestia/internal/eval"
)

// runEval is `hestia eval --base-url URL --model NAME [--api-key K]
// [--provider openai|anthropic] [--json FILE] [--only REGEXP] [--keep]`:
// the evaluation suite (internal/eval) against a model endpoint, in a
// throwaway home with its own daemon; the install's own data is not used.
func runEval(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("eval")
	var ep eval.Endpoint
	fs.StringVar(&ep.BaseURL, "base-url", env.Getenv("HESTIA_LLM_BASE_URL"), "the model endpoint (OpenAI-compatible: …/v1; Anthropic: https://api.anthropic.com/v1)")
	fs.StringVar(&ep.Model, "model", env.Getenv("HESTIA_LLM_MODEL"), "the model name")
	fs.StringVar(&ep.APIKey, "api-key", env.Getenv("HESTIA_LLM_API_KEY"), "the API key (default $HESTIA_LLM_API_KEY)")
	fs.StringVar(&ep.Provider, "provider", "openai", "openai (any OpenAI-compatible server: Ollama, llama.cpp, LM Studio, OpenAI) or anthropic")
	fs.DurationVar(&ep.Timeout, "timeout", 0, "llm.timeout for the run's daemon (0: the default)")
	jsonOut := fs.String("json", "", "write the JSON report to FILE")
	only := fs.String("only", "", "run only the tasks whose id matches REGEXP")
	turn := fs.Duration("turn-timeout", 10*time.Minute, "give up on one message's turn after this long")
	keep := fs.Bool("keep", false, "keep the generated home and the daemon's data (printed at the end)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hestia-eval-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	// The file tools resolve ~ from HOME: this one-shot process works in
	// the generated home.
	if err := os.Setenv("HOME", eval.HomeDir(dir)); err != nil {
		return err
	}
	rep, err := eval.Run(ctx, eval.Options{Endpoint: ep, Dir: dir, Only: *only, TurnTimeout: *turn,
		Progress: func(r eval.Result) {
			status := "ok"
			if !r.OK {
				status = "FAIL"
			}
			fmt.Fprintf(env.Stderr, "%-30s %-4s %6.1f s\n", r.ID, status, r.Seconds)
		}})
	if err != nil {
		return err
	}
	eval.PrintReport(env.Stdout, rep)
	if *jsonOut != "" {
		if err := eval.WriteJSON(*jsonOut, rep); err != nil {
			return err
		}
	}
	if *keep {
		fmt.Fprintf(env.Stdout, "kept: %s\n", dir)
	}
	if rep.Unsafe > 0 {
		return fmt.Errorf("%d unsafe actions", rep.Unsafe)
	}
	return nil
}

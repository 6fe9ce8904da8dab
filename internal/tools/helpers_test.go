package tools

import (
	"context"
	"errors"
)

type ctxCtx = context.Context

var errUnavailable = errors.New("server not connected")

func ctxBG() context.Context { return context.Background() }

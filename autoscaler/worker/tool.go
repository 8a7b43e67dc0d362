package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WorkInput is the work tool's arguments: {"ms": N}. MS absent means the
// worker's default (Config.Work); above 60000 it is capped; below 0 is an error.
type WorkInput struct {
	MS *int64 `json:"ms,omitempty" jsonschema:"how long to hold the call, in milliseconds (0..60000); the worker's default when absent"`
}

// workTool holds the call and answers "worked N ms on ID". A call cut short
// by ctx (client gone, drain over) ends with a tool error.
func (w *Worker) workTool(ctx context.Context, _ *mcp.CallToolRequest, in WorkInput) (*mcp.CallToolResult, any, error) {
	d := w.work
	if in.MS != nil {
		if *in.MS < 0 {
			return nil, nil, fmt.Errorf("ms must be >= 0, got %d", *in.MS)
		}
		d = time.Duration(min(*in.MS, MaxWork.Milliseconds())) * time.Millisecond
	}
	if err := w.wait(ctx, d); err != nil {
		w.log.Info("work call interrupted", "ms", d.Milliseconds(), "err", err.Error())
		return nil, nil, fmt.Errorf("work on %s interrupted: %w", w.id, err)
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("worked %d ms on %s", d.Milliseconds(), w.id)}},
	}, nil, nil
}

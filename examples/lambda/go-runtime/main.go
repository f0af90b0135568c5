// A `provided`-style bootstrap built with aws-lambda-go (the AWS client, not ours):
// it echoes the event. CS_INIT_SLEEP_MS simulates init work before the runtime
// client starts polling /next.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

func handler(ctx context.Context, event json.RawMessage) (map[string]any, error) {
	out := map[string]any{"echo": event, "runtime": "aws-lambda-go"}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		out["requestId"] = lc.AwsRequestID
	}
	return out, nil
}

func main() {
	if ms, err := strconv.Atoi(os.Getenv("CS_INIT_SLEEP_MS")); err == nil && ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	lambda.Start(handler)
}

//! A `provided`-style bootstrap built with the `lambda_runtime` crate (the AWS
//! client, not ours): it echoes the event. CS_INIT_SLEEP_MS simulates init work.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
    Ok(json!({
        "echo": event.payload,
        "requestId": event.context.request_id,
        "runtime": "lambda_runtime",
    }))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    if let Some(ms) = std::env::var("CS_INIT_SLEEP_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    lambda_runtime::run(service_fn(handler)).await
}

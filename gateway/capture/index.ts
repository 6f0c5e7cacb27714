// Traffic capture for the gateway: see capture.ts. The gateway builds one per `capture` config
// section (enabled, sample_rate, max_bytes, dir) and calls record() after the pipeline ran.
export { createCapture, safeName, sessionSample, NO_SESSION, type Capture, type CaptureMeta, type CaptureOptions, type CaptureStats } from './capture.ts';

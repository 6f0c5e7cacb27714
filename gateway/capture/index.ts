// Traffic capture for the gateway: see capture.ts. The gateway builds one per `capture` config
// section (enabled, sample_rate, max_bytes, dir) and calls record() once the worker
// answered (the pipeline's observe hook), so lines carry the worker's usage.
export {
  createCapture,
  safeName,
  sessionSample,
  NO_SESSION,
  type Capture,
  type CaptureMeta,
  type CaptureOptions,
  type CaptureStats,
} from './capture.ts';

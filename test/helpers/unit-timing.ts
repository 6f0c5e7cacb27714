// A timing model for hand-computed fleet examples: a prompt token costs 1 ms of prefill
// (2·P / (MFU · peak) = 1e-3, no attention term) and a decode step with a full KV costs 1 s
// (weights 1 byte over 1 byte/s, no KV bytes).
import type { TimingModel } from '../../loadtest/sim-worker/timing.ts';

export const UNIT_TIMING: TimingModel = {
  name: 'unit',
  params: 0.5,
  layers: 0,
  hidden: 1,
  kvHeads: 1,
  headDim: 1,
  weightBytes: 2,
  kvBytes: 2,
  peakFlops: 1000,
  mfu: 1,
  bandwidth: 1,
};

// Tests use the same fake upstream the overhead benchmark runs (loadtest/fake-upstream.ts).
export {
  startFakeUpstream,
  type FakeKnobs,
  type FakeUpstream,
  type FakeUpstreamOptions,
} from '../../loadtest/fake-upstream.ts';

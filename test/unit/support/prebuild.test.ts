import { describe, expect, it } from 'vitest';
import { shouldBuildNodeEarly } from '../../support/prebuild.ts';

describe('the node build in the background', () => {
  it('is started only by `npm test`, not by a run of a few test files', () => {
    expect(shouldBuildNodeEarly({ npm_lifecycle_event: 'test:vitest' })).toBe(false);
    expect(shouldBuildNodeEarly({ npm_lifecycle_event: 'test:unit' })).toBe(false);
    expect(shouldBuildNodeEarly({})).toBe(false);
  });
});

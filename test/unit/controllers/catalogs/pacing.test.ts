// The rest after a catalog's rebuild (controllers/catalogs/pacing.ts).
import { describe, expect, it } from 'vitest';
import { BUILD_SHARE, RebuildPacer } from '../../../../operator/controllers/catalogs/pacing.ts';

describe('RebuildPacer', () => {
  it('lets a catalog never rebuilt start at once', () => {
    expect(new RebuildPacer().restLeft('AgentCatalog/shop/all', 5_000)).toBe(0);
  });

  it('rests BUILD_SHARE times the work after the rebuild ended, then lets it start', () => {
    const pacer = new RebuildPacer();
    // 40 ms of work, then writes until 1,000: the rest counts the work only.
    pacer.rebuilt('AgentCatalog/shop/all', 40, 1_000);
    expect(BUILD_SHARE).toBe(2);
    expect(pacer.restLeft('AgentCatalog/shop/all', 1_000)).toBe(80);
    expect(pacer.restLeft('AgentCatalog/shop/all', 1_050)).toBe(30);
    expect(pacer.restLeft('AgentCatalog/shop/all', 1_080)).toBe(0);
    expect(pacer.restLeft('AgentCatalog/shop/all', 9_000)).toBe(0);
  });

  it('keeps each catalog to its own last rebuild', () => {
    const pacer = new RebuildPacer();
    pacer.rebuilt('ClusterAgentCatalog//everything', 3_000, 10_000); // a full rebuild of a large one
    pacer.rebuilt('AgentCatalog/shop/all', 20, 10_000);
    expect(pacer.restLeft('ClusterAgentCatalog//everything', 10_100)).toBe(5_900);
    expect(pacer.restLeft('AgentCatalog/shop/all', 10_100)).toBe(0);
    // The next rebuild replaces the last one's figures.
    pacer.rebuilt('ClusterAgentCatalog//everything', 30, 20_000);
    expect(pacer.restLeft('ClusterAgentCatalog//everything', 20_000)).toBe(60);
  });

  it('forgets a deleted catalog, and never rests for a negative work time', () => {
    const pacer = new RebuildPacer();
    pacer.rebuilt('AgentCatalog/shop/all', 500, 1_000);
    pacer.forget('AgentCatalog/shop/all');
    expect(pacer.restLeft('AgentCatalog/shop/all', 1_000)).toBe(0);
    // A clock that stepped back between the start and the decision counts as no work.
    pacer.rebuilt('AgentCatalog/shop/all', -200, 1_000);
    expect(pacer.restLeft('AgentCatalog/shop/all', 1_000)).toBe(0);
  });
});

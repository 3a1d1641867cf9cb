// The import rules of operator/ (npm run lint): the layers of layers.json, each importing only
// its own folder and lower layers, and no cycle anywhere. Rules are made from the layer table, so
// the table is the one place to change them.
const { layers } = require('./layers.json');

/** A layer's folder as a path pattern: a folder of operator/, or one file ("controllers/metrics.ts"). */
function pattern(folder) {
  if (folder === 'operator/*.ts') return '^operator/[^/]+\\.ts$';
  const escaped = folder.replace(/[.]/g, '\\.');
  return folder.endsWith('.ts') ? `^operator/${escaped}$` : `^operator/${escaped}/`;
}

const forbidden = [
  {
    name: 'no-circular',
    comment: 'A cycle makes two modules one: break it by moving what both need lower.',
    severity: 'error',
    from: { path: '^operator/' },
    to: { circular: true },
  },
];
layers.forEach((layer, i) => {
  const above = layers.slice(i + 1).flatMap((l) => l.folders.map(pattern));
  for (const folder of layer.folders) {
    const peers = layer.folders.filter((f) => f !== folder).map(pattern);
    const notAllowed = [...above, ...peers];
    if (notAllowed.length === 0) continue;
    forbidden.push({
      name: `layer-${layer.name.replace(/[^a-z]+/gi, '-')}`,
      comment: `${folder} is in the layer "${layer.name}": it imports only its own folder and lower layers (layers.json).`,
      severity: 'error',
      from: { path: pattern(folder) },
      to: { path: notAllowed },
    });
  }
});

module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(node_modules|dist)/' },
  },
};

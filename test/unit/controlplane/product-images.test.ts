/**
 * The operator image's config comes from the Dockerfile's runtime stage (test/node/product-images.ts):
 * the parse keeps a quoted label with spaces whole, substitutes build args, defaults EXPOSE to
 * tcp, resolves COPY destinations against WORKDIR, and refuses a Dockerfile without a VERSION.
 * The node project checks the assembled archive against the real Dockerfile
 * (test/e2e/product-images.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { dockerfileRuntime, operatorImageConfig } from '../../node/product-images.ts';

const DOCKERFILE = `# syntax=docker/dockerfile:1
ARG RUNTIME_IMAGE=example.test/base:1
ARG VERSION=1.2.3
FROM example.test/build:1 AS build
WORKDIR /src
COPY . .

FROM \${RUNTIME_IMAGE}
ARG RUNTIME_IMAGE
ARG VERSION
LABEL a.title="two words" \\
      a.version="\${VERSION}" \\
      a.base=\${RUNTIME_IMAGE}
WORKDIR /app
COPY --from=build /src/out ./out
COPY --from=build /src/x /opt/x
ENV NODE_ENV=production
USER 1000:1000
EXPOSE 8080 53/udp
ENTRYPOINT ["/bin/run", "/app/out/main.js"]
CMD ["serve"]
`;

describe('dockerfileRuntime', () => {
  it('reads the runtime stage with build args at their defaults', () => {
    const d = dockerfileRuntime(DOCKERFILE);
    expect(d.base).toBe('example.test/base:1');
    expect(d.version).toBe('1.2.3');
    expect(d.labels).toEqual({
      'a.title': 'two words',
      'a.version': '1.2.3',
      'a.base': 'example.test/base:1',
    });
    expect(d.copies).toEqual(['/app/out', '/opt/x']);
    expect(d.exposedPorts).toEqual(['8080/tcp', '53/udp']);
    expect(operatorImageConfig(d)).toMatchObject({
      Entrypoint: ['/bin/run', '/app/out/main.js'],
      Cmd: ['serve'],
      User: '1000:1000',
      WorkingDir: '/app',
      ExposedPorts: { '8080/tcp': {}, '53/udp': {} },
    });
    // distroless' environment first, the Dockerfile's ENV after it.
    expect(operatorImageConfig(d).Env?.at(-1)).toBe('NODE_ENV=production');
  });

  it('refuses a Dockerfile without a VERSION default', () => {
    expect(() => dockerfileRuntime(DOCKERFILE.replace('ARG VERSION=1.2.3\n', ''))).toThrow(/ARG VERSION=/);
  });
});

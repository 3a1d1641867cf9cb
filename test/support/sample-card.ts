/** The A2A 1.0 card (spec.card) most controller tests publish: one JSON-RPC interface, one skill. */
export function sampleCard(version = '1.0.0', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Weather Agent',
    description: 'Answers questions about the weather forecast for a city.',
    version,
    supportedInterfaces: [
      { url: 'https://weather.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'forecast', name: 'Forecast', description: 'Gives the forecast for a city', tags: ['weather'] },
    ],
    ...extra,
  };
}

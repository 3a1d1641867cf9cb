/**
 * What the card controller is told about a card's requested certificate, an input of its signing
 * key resolution (keys.ts): `sign` says whether the issued Secret, once it exists, may
 * sign; `message` explains why there is nothing to sign with yet.
 */
export interface IssuanceState {
  /** False: the operator refuses to sign with the Secret even if it exists (not its Certificate). */
  sign: boolean;
  reason: 'CertificatePending' | 'CertificateNotRequested';
  message: string;
  /**
   * The identity the card's certificate must carry, and nothing else: a Secret whose certificate
   * names anything more or else (an edit by hand not yet undone, a template or service account
   * that changed and a renewal not yet done) does not sign; the last good card stays served.
   */
  identity?: string;
}

// jose (npm) against awooop's approval tokens, both ways:
//   node jose_interop.mjs verify KEY_HEX TOKEN AUDIENCE   -> {"ok":..., "payload":...}
//   node jose_interop.mjs sign KEY_HEX KID AUD RUN SUB ACTION [ALG] -> a token
import * as jose from 'jose';
import { randomBytes } from 'node:crypto';

const [mode, keyHex, ...rest] = process.argv.slice(2);
const key = Buffer.from(keyHex, 'hex');
if (mode === 'verify') {
  const [tok, aud] = rest;
  try {
    const { payload, protectedHeader } = await jose.jwtVerify(tok, key, {
      algorithms: ['HS256'], issuer: 'awooop', audience: aud, clockTolerance: 30,
      requiredClaims: ['exp', 'iat', 'nbf', 'jti', 'sub'],
    });
    console.log(JSON.stringify({ ok: true, payload, header: protectedHeader }));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, code: e.code }));
  }
} else if (mode === 'sign') {
  const [kid, aud, run, sub, action, alg = 'HS256'] = rest;
  const tok = await new jose.SignJWT({ run_id: run, action })
    .setProtectedHeader({ alg, typ: 'JWT', kid })
    .setIssuer('awooop').setAudience(aud).setSubject(sub)
    .setIssuedAt().setNotBefore('0s').setExpirationTime('5m')
    .setJti(randomBytes(18).toString('base64url'))
    .sign(alg === 'HS512' ? Buffer.concat([key, key]) : key);
  console.log(tok);
}

// The masking rules live with the other pure formats (src/formats/mask-url.ts), shared by every layer.
export { redactUrl, redactUrls } from '../formats/mask-url.js';

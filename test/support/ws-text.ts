export { wsText } from '../../src/http/ws-text';

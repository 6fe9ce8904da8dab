// Voice mode's capture: an AudioWorklet that turns the microphone (at the
// context's rate, usually 48 kHz) into the 16 kHz mono 16-bit PCM the
// daemon's voice socket takes, posted in 20 ms frames (320 samples). Each
// output sample is the mean of the input samples it stands for, a box
// filter that keeps most aliasing out of the speech band. Served from
// public/ as plain JavaScript: a worklet module is loaded by URL, and the
// page's CSP allows scripts from 'self' only.
const OUT_RATE = 16000;
const FRAME = 320;

class VoiceCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / OUT_RATE; // input samples per output sample
    this.acc = 0;
    this.n = 0;
    this.pos = 0; // input samples consumed towards the next output sample
    this.out = new Int16Array(FRAME);
    this.fill = 0;
  }

  process(inputs) {
    const ch = inputs[0] && inputs[0][0];
    if (!ch) return true;
    for (let i = 0; i < ch.length; i++) {
      this.acc += ch[i];
      this.n++;
      this.pos++;
      if (this.pos >= this.step) {
        this.pos -= this.step;
        const v = Math.max(-1, Math.min(1, this.acc / this.n));
        this.out[this.fill++] = v < 0 ? v * 0x8000 : v * 0x7fff;
        this.acc = 0;
        this.n = 0;
        if (this.fill === FRAME) {
          this.port.postMessage(this.out.buffer, [this.out.buffer]);
          this.out = new Int16Array(FRAME);
          this.fill = 0;
        }
      }
    }
    return true;
  }
}

registerProcessor('voice-capture', VoiceCapture);

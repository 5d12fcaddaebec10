"""An offline stand-in for an OpenAI-compatible judge, for the demo: PASS when the text mentions a refund.

Prints its base URL on stdout, then serves on 127.0.0.1 until killed.
"""

import json
from http.server import BaseHTTPRequestHandler, HTTPServer


class Judge(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"].split("[CRITERIA]")[0].lower()
        verdict = "RESULT: PASS" if "refund" in text and "days" in text else "RESULT: FAIL"
        answer = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": f"Checked the refund wording.\n{verdict}"}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = HTTPServer(("127.0.0.1", 0), Judge)
print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
server.serve_forever()

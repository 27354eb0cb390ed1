#!/usr/bin/env python3
"""py_webauthn (the reference Python relying party) verifying the same assertion latchkey-bench verifies, for the
ratio in the benchmark table. Reads the assertion from the JSON file named by argv[1] (written by latchkey-bench),
verifies it for about argv[2] seconds and prints the rate (verifications per second) on stdout."""
import json
import sys
import time

from webauthn import base64url_to_bytes, verify_authentication_response

case = json.load(open(sys.argv[1]))
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
credential = {
    "id": case["credential_id"], "rawId": case["credential_id"], "type": "public-key",
    "response": {"clientDataJSON": case["client_data_json"], "authenticatorData": case["authenticator_data"],
                 "signature": case["signature"]},
}
arguments = dict(credential=credential, expected_challenge=base64url_to_bytes(case["challenge"]), expected_rp_id=case["rp_id"],
                 expected_origin=case["origin"], credential_public_key=base64url_to_bytes(case["public_key_cose"]),
                 credential_current_sign_count=0, require_user_verification=False)
for _ in range(20):
    verify_authentication_response(**arguments)
count, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    for _ in range(20):
        verify_authentication_response(**arguments)
    count += 20
print(f"{count / (time.perf_counter() - start):.1f}")

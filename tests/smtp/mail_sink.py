"""An aiosmtpd handler for the tests: each message received is written to
the folder given on the command line as one JSON file (sender, recipients,
subject and the decoded plain text), written aside then renamed, so a
reader never sees half a file.

    python -m aiosmtpd -n -l 127.0.0.1:2525 -c mail_sink.Sink /some/folder
"""

import email
import email.policy
import json
import os
import itertools


class Sink:
    def __init__(self, folder):
        self.folder = folder
        self.numbers = itertools.count(1)
        os.makedirs(folder, exist_ok=True)

    @classmethod
    def from_cli(cls, parser, *args):
        if len(args) != 1:
            parser.error("mail_sink.Sink takes one argument: the folder to write to")
        return cls(args[0])

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.original_content or envelope.content,
                                           policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        record = {
            "from": envelope.mail_from,
            "to": list(envelope.rcpt_tos),
            "subject": str(message.get("subject", "")),
            "text": body.get_content() if body is not None else "",
        }
        name = "%06d" % next(self.numbers)
        aside = os.path.join(self.folder, name + ".tmp")
        with open(aside, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.rename(aside, os.path.join(self.folder, name + ".json"))
        return "250 Message accepted for delivery"

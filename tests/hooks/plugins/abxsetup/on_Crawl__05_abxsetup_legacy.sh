# A Crawl hook as abx-plugins 1.11 named them: still runs at crawl level, by its step (0, before step 8).
date +%s.%N > legacy.txt
echo '{"type": "ArchiveResult", "status": "succeeded", "output_str": "legacy crawl hook"}'

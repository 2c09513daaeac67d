from torchtop.cli import main

raise SystemExit(main())

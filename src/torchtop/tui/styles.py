"""The dashboard's layout and look (Textual CSS), inline so it ships inside the package.

Two sizes matter: 80x24 (every line counts: thin rows, the step history shrinks to a line or
two) and large terminals (from 120 columns and 36 rows: taller rows, GPU counters one plot
each). The app's breakpoints set `-wide`/`-tall` on the screen and these rules do the rest.
"""

CSS = """
Screen {
    layout: vertical;
}
JobHeader {
    height: 2;
    text-wrap: nowrap;
    text-overflow: ellipsis;
    padding: 0 1;
    background: $boost;
}
#top {
    height: 8;
}
#middle {
    height: 1fr;
}
#bottom {
    height: 6;
}
.panel {
    width: 1fr;
    height: 1fr;
    padding: 0 1;
    border: round $primary 40%;
    border-title-color: $text;
    border-title-style: bold;
    border-subtitle-color: $text-muted;
    text-wrap: nowrap;
    text-overflow: ellipsis;
}
.panel:focus, .panel:focus-within {
    border: round $accent;
}
TopsPanel ListPanel {
    height: 1fr;
    padding: 0;
    border: none;
    text-wrap: nowrap;
    text-overflow: ellipsis;
}
TopsPanel ListPanel:focus {
    border: none;
}
#fixes OptionList {
    height: 1fr;
    border: none;
    padding: 0;
    background: $surface 0%;
}
#fixes OptionList:focus {
    border: none;
}
#fix-preview {
    display: none;
    height: 1fr;
    border-top: dashed $primary 40%;
    text-wrap: wrap;
}
.-tall #fix-preview {
    display: block;
}
#fixes OptionList {
    height: auto;
    max-height: 1fr;
    text-wrap: wrap;
    scrollbar-size-vertical: 1;
    overflow-x: hidden;
}
#fixes {
    padding: 0 0 0 1;
}
#filter {
    height: 1;
    margin: 0 1;
}
.-tall #top {
    height: 11;
}
.-tall #bottom {
    height: 10;
}
.-wide VerdictPanel {
    width: 2fr;
}
.-wide StepTimePanel {
    width: 3fr;
}
#trial {
    height: auto;
    max-height: 8;
    padding: 0 1;
    border: round $accent;
    border-title-color: $text;
    border-title-style: bold;
    border-subtitle-color: $text-muted;
    text-wrap: wrap;
}
#details, #help, #apply, #row {
    width: 90%;
    max-width: 110;
    height: 90%;
    border: round $accent;
    border-title-style: bold;
    padding: 0 1;
    background: $surface;
}
#row {
    height: auto;
    max-height: 90%;
}
FixDetailsScreen, HelpScreen, ApplyScreen, RowScreen {
    align: center middle;
}
"""
